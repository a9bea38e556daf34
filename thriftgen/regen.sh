#!/usr/bin/env bash
# Regenerates thriftgen/ from the real Hive jars (make generate):
#   1. resolves the jars of thriftgen/extract/profiles.txt into the Maven cache ($HMS_PROXY_CACHE/m2,
#      default <repo>/.cache/m2), downloading what is missing;
#   2. extracts each profile's wire schema with thriftgen/extract/SchemaExtractor.java (Java 17 source launcher);
#   3. merges the profiles with thriftgen/hdp-delta.json into thriftgen/schema.json;
#   4. generates thriftgen/schema_gen.go, types_gen.go and client_gen.go from schema.json.
# Only step 4 is needed after editing the generator: go run ./thriftgen/gen generate -schema thriftgen/schema.json -out thriftgen
# With --fetch it only does step 1 (what thriftgen's re-extraction test needs; changes no file of the repo).
set -euo pipefail

fetch_only=false
case ${1:-} in
--fetch) fetch_only=true ;;
"") ;;
*) echo "usage: thriftgen/regen.sh [--fetch]" >&2; exit 2 ;;
esac

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${HMS_PROXY_CACHE:-$repo/.cache}
m2=$cache/m2
work=$cache/thriftgen
java=${JAVA:-java}
mkdir -p "$m2" "$work"

jar_of() { # group:artifact:version -> path in the Maven cache
	local g=${1%%:*} rest=${1#*:}
	local a=${rest%%:*} v=${rest#*:}
	echo "$m2/${g//.//}/$a/$v/$a-$v.jar"
}

resolve() {
	local jar
	jar=$(jar_of "$1")
	if [[ ! -f $jar ]]; then
		echo "regen: resolving $1" >&2
		mvn -q -B -Dmaven.repo.local="$m2" dependency:get -Dartifact="$1" -Dtransitive=false >&2
	fi
	[[ -f $jar ]] || { echo "regen: $1 did not resolve to $jar" >&2; exit 1; }
	echo "$jar"
}

command -v "$java" >/dev/null || $fetch_only || { echo "regen: no java (set JAVA); Java 17+ is needed" >&2; exit 1; }

extracted=()
while read -r profile hive thrift fb303; do
	[[ -z $profile || $profile == \#* ]] && continue
	hive_jar=$(resolve "$hive")
	thrift_jar=$(resolve "$thrift")
	fb303_jar=$(resolve "$fb303")
	$fetch_only && continue
	echo "regen: extracting $profile from $(basename "$hive_jar")" >&2
	"$java" -cp "$hive_jar:$thrift_jar:$fb303_jar" "$repo/thriftgen/extract/SchemaExtractor.java" \
		"$hive_jar" "$profile" "$work/$profile.json"
	extracted+=("$work/$profile.json")
done <"$repo/thriftgen/extract/profiles.txt"

if $fetch_only; then
	echo "regen: jars present in $m2" >&2
	exit 0
fi
cd "$repo"
echo "regen: merging into thriftgen/schema.json" >&2
go run ./thriftgen/gen merge -delta thriftgen/hdp-delta.json -o thriftgen/schema.json "${extracted[@]}"
echo "regen: generating Go code" >&2
go run ./thriftgen/gen generate -schema thriftgen/schema.json -out thriftgen
echo "regen: done; git diff thriftgen/ shows what changed" >&2
