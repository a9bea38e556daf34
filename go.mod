module github.com/hms-proxy/hms-proxy

go 1.26

require (
	github.com/apache/thrift v0.25.0 // indirect
	github.com/go-zookeeper/zk v1.0.4 // indirect
	github.com/jcmturner/gokrb5/v8 v8.4.4 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/sony/gobreaker/v2 v2.4.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)
