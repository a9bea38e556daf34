# hms-proxy: every target does its own set-up on a fresh machine (see README.md).
SHELL := /bin/bash
GO ?= go

.PHONY: test demo demo-ha bench generate check build

## test: install what the real-Hive test bed needs, then run every test (what .ci/run calls)
test:
	bash testbed/bin/test.sh

## demo: start two Hive 3.1.3 metastores, one Hive 4.1.0 metastore and the proxy; Ctrl-C stops all
demo:
	bash testbed/bin/demo.sh

## demo-ha: two Hive 3.1.3 metastores, ZooKeeper, three proxy replicas behind HAProxy on 127.0.0.1:9083; Ctrl-C stops all
demo-ha:
	bash testbed/bin/demo-ha.sh

## bench: side-by-side benchmark of direct HMS vs hms-proxy (results under bench/results/)
bench:
	bash bench/run.sh

## generate: re-extract the canonical Thrift schema from the real Hive jars and regenerate thriftgen/
generate:
	bash thriftgen/regen.sh

## check: formatting, vet and staticcheck
check:
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed: $$bad"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

## build: the proxy binary in bin/
build:
	$(GO) build -o bin/hms-proxy ./cmd/hms-proxy
