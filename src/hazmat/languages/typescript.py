"""TypeScript: bundled by esbuild (types are not checked), then run as JavaScript."""

from types import MappingProxyType

from hazmat.languages import IMAGE_VERSION, Language, SelfTest

LANGUAGE = Language(
    name="typescript",
    image=f"hazmat/node:{IMAGE_VERSION}",
    source_name="main.ts",
    extensions=(".ts", ".mts", ".cts"),
    # main.mts is bundled as an ES module (main.mjs), main.ts and main.cts as CommonJS
    build=(
        "if [ -f main.mts ]; then set -- main.mts esm mjs;"
        " elif [ -f main.cts ]; then set -- main.cts cjs js;"
        " else set -- main.ts cjs js; fi;"
        ' exec esbuild "$1" --bundle --platform=node --format="$2" --packages=external'
        ' --log-level=warning --outfile="/tmp/.hazmat-build/main.$3"'
    ),
    run="exec node /tmp/.hazmat-build/main.js",
    runner="node",
    displays=True,
    entry="/tmp/.hazmat-build/main.js",
    aliases=("ts",),
    version=(
        'import { execFileSync } from "child_process";\n'
        'console.log(execFileSync("esbuild", ["--version"]).toString().trim());\n'
    ),
    hello="const one: number = 1;\nconsole.log(one);",
    module_sources=MappingProxyType({"esm": "main.mts", "commonjs": "main.cts"}),
    rank=2,
    analysers=("javascript",),
    names=MappingProxyType(
        {
            "sandbox_fusion": ("typescript",),
            "piston": ("typescript", "ts", "node-ts", "tsc"),
            "judge0": ("74",),
        }
    ),
    self_test=SelfTest(
        greet=(
            "const greet = (who: string): string => `hello ${who}`;\nlet s: string = '';\n"
            "process.stdin.on('data', (d: Buffer) => s += d.toString());\n"
            "process.stdin.on('end', () => console.log(greet(s.trim())));\n"
        ),
        streams="console.log('out'); console.error('err'); process.exit(3 as number);\n",
        compile_error=('const x: number = ;\n', 'main.ts'),
    ),
    title="TypeScript (Node.js)",
    shows=(
        "display(value) shows an image (a Buffer holding a PNG), text or JSON, "
        "display.html(s) HTML"
    ),
    out_of_memory=("JavaScript heap out of memory",),
)
