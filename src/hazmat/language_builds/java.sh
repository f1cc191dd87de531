mkdir -p @BUILD@ || exit
kind='(class|record|enum|interface)' name='([A-Za-z_$][A-Za-z0-9_$]*)'
top=$(sed -nE "s/^\s*public\s+([a-z]+\s+)*$kind\s+$name.*/\3/p" Main.java | head -n 1)
pkg=$(sed -nE 's/^\s*package\s+([A-Za-z0-9_.]+)\s*;.*/\1/p' Main.java | head -n 1)
main=$(awk 'match($0, /(class|record|enum|interface)[ \t]+[A-Za-z_$][A-Za-z0-9_$]*/) {
    split(substr($0, RSTART, RLENGTH), w, /[ \t]+/); last = w[2] }
    /static[ \t].*void[ \t]+main[ \t]*\(/ && last != "" { print last; exit }' Main.java)
src=$PWD/Main.java
if [ -n "$top" ] && [ "$top" != Main ]; then
    src="@BUILD@/src/$top.java"
    mkdir -p @BUILD@/src && cp Main.java "$src" || exit
fi
printf '%s\n' "${pkg:+$pkg.}${main:-${top:-Main}}" > @BUILD@/main-class || exit
set -- -proc:none -encoding UTF-8 -nowarn -d @BUILD@/classes "$src"
s=@SERVER@
if pid=$(cat "$s/pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null && [ -p "$s/in" ]; then
    printf '%s\n' "$@" > "$s/in" && cat "$s/done" > /dev/null && [ -f "$s/status" ] || exit 125
    sed "s|^$PWD/||" "$s/out" >&2
    exit "$(cat "$s/status")"
fi
exec javac @JFLAGS@ -J-XX:SharedArchiveFile=@ARCHIVE@ "$@"
