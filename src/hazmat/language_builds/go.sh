set -- ./*_test.go
if [ ! -e "$1" ] && grep -q '^func Test.*\*testing\.T)' main.go; then
    mkdir -p @BUILD@/src && cp ./*.go @BUILD@/src/ && cd @BUILD@/src &&
        mv main.go main_test.go && set -- main_test.go
fi
if [ -e "$1" ]; then exec go test -c -ldflags='-s -w' -o @BUILD@/main; fi
exec go build -ldflags='-s -w' -o @BUILD@/main ./*.go
