"""Go: `go build` (or `go test -c` for graders' tests) against the image's prebuilt standard
library."""

from types import MappingProxyType

from hazmat.language_builds import read
from hazmat.languages import BUILD_DIR, IMAGE_VERSION, Language, SelfTest
from hazmat.template import fill

# The Go image's build cache with the standard library compiled (images/recipes.py)
GO_CACHE = "/usr/lib/hazmat/gocache"
# Go: `go build`, or `go test -c` when the program comes with tests as graders write them (a
# `_test.go` file beside it, or test functions in the program itself: then it is built as
# main_test.go in a folder of its own, with the other files)
GO_BUILD = fill(read("go.sh"), BUILD=BUILD_DIR)

LANGUAGE = Language(
    name="go",
    image=f"hazmat/go:{IMAGE_VERSION}",
    source_name="main.go",
    extensions=(".go",),
    # -s -w: no symbol table or DWARF; panics keep file:line (from pclntab) and the
    # link is ~100 ms shorter at half a CPU (docs/benchmarks.md)
    build=GO_BUILD,
    run="exec /tmp/.hazmat-build/main",
    aliases=("golang",),
    env=MappingProxyType(
        {
            "GOCACHE": "/tmp/.gocache",
            # Debian's Go packages (testify) live in /usr/share/gocode
            "GOPATH": "/tmp/go:/usr/share/gocode",
            "GOFLAGS": "-buildvcs=false",
            "GO111MODULE": "off",
            "CGO_ENABLED": "0",
            "GOTOOLCHAIN": "local",
            "GOPROXY": "off",
        }
    ),
    exec_tmp=True,
    version=(
        'package main\n\nimport (\n\t"fmt"\n\t"runtime"\n)\n\n'
        "func main() {\n\tfmt.Println(runtime.Version())\n}\n"
    ),
    hello='package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(1) }\n',
    # a writable build cache that links to the image's compiled standard library
    prepare=(
        f"[ -d {GO_CACHE} ] && mkdir -p .gocache && cp -rs {GO_CACHE}/. .gocache/"
        " && date +%s > .gocache/trim.txt"
    ),
    rank=3,
    analysers=("go",),
    names=MappingProxyType(
        {
            "polygon": ("go",),
            "sandbox_fusion": ("go",),
            "piston": ("go", "golang"),
            "judge0": ("60",),
        }
    ),
    self_test=SelfTest(
        greet=(
            'package main\n\nimport (\n\t"bufio"\n\t"fmt"\n\t"os"\n)\n\nfunc main() {\n'
            '\ts := bufio.NewScanner(os.Stdin)\n\ts.Scan()\n\tfmt.Println("hello", s.Text())\n}\n'
        ),
        streams=(
            'package main\nimport ("fmt"; "os")\n'
            'func main() { fmt.Println("out"); fmt.Fprintln(os.Stderr, "err"); os.Exit(3) }\n'
        ),
        compile_error=('package main\n\nfunc main() { undefined_name() }\n', 'undefined'),
    ),
    title="Go",
    out_of_memory=("fatal error: runtime: out of memory",),
)
