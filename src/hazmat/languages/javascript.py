"""JavaScript on Node.js: a runner kept warm; an ES module or CommonJS (run/module_kind.py)."""

from types import MappingProxyType

from hazmat.languages import IMAGE_VERSION, Language, SelfTest

LANGUAGE = Language(
    name="javascript",
    image=f"hazmat/node:{IMAGE_VERSION}",
    source_name="main.js",
    extensions=(".js", ".mjs", ".cjs"),
    run="exec node main.js",
    runner="node",
    displays=True,
    entry="main.js",
    aliases=("js", "node", "nodejs"),
    version="console.log(process.versions.node);\n",
    hello="console.log(1)",
    module_sources=MappingProxyType({"esm": "main.mjs", "commonjs": "main.cjs"}),
    rank=1,
    analysers=("javascript",),
    names=MappingProxyType(
        {
            "polygon": ("js",),
            "sandbox_fusion": ("nodejs",),
            "piston": ("javascript", "js", "node", "node-js", "node-javascript"),
            "judge0": ("63",),
        }
    ),
    self_test=SelfTest(
        greet=(
            "let s = '';\nprocess.stdin.on('data', d => s += d);\n"
            "process.stdin.on('end', () => console.log('hello', s.trim()));\n"
        ),
        streams="console.log('out'); console.error('err'); process.exit(3);\n",
    ),
    title="JavaScript (Node.js)",
    shows=(
        "display(value) shows an image (a Buffer holding a PNG), text or JSON, "
        "display.html(s) HTML"
    ),
    out_of_memory=("JavaScript heap out of memory",),
)
