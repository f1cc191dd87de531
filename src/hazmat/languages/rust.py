"""Rust: rustc, edition 2021, the standard library only."""

from types import MappingProxyType

from hazmat.languages import BUILD_DIR, IMAGE_VERSION, ImageSpec, Language, SelfTest

LANGUAGE = Language(
    name="rust",
    image=f"hazmat/rust:{IMAGE_VERSION}",
    source_name="main.rs",
    extensions=(".rs",),
    build=f"mkdir -p {BUILD_DIR} && exec rustc --edition 2021 -O -C debuginfo=0"
    f" -C strip=symbols -o {BUILD_DIR}/main main.rs",
    run=f"exec {BUILD_DIR}/main",
    aliases=("rs",),
    exec_tmp=True,
    version=(
        'use std::process::Command;\n'
        '\n'
        'fn main() {\n'
        '    let out = Command::new("rustc").arg("--version").output().expect("rustc");\n'
        '    print!("{}", String::from_utf8_lossy(&out.stdout));\n'
        '}\n'
    ),
    hello='fn main() {\n    println!("1");\n}\n',
    rank=8,
    analysers=("rust",),
    names=MappingProxyType(
        {
            "polygon": ("rust",),
            "sandbox_fusion": ("rust",),
            "piston": ("rust", "rs"),
            "judge0": ("73",),
        }
    ),
    images=(ImageSpec("rust", ("rustc", "gcc", "libc6-dev"), "rustc (edition 2021, std only)"),),
    self_test=SelfTest(
        greet=(
            'use std::io::BufRead;\n\nfn main() {\n'
            '    let who = std::io::stdin().lock().lines().next().unwrap().unwrap();\n'
            '    println!("hello {who}");\n}\n'
        ),
        streams='fn main() { println!("out"); eprintln!("err"); std::process::exit(3); }\n',
        compile_error=('fn main() { let x: i32 = "s"; }\n', 'mismatched types'),
    ),
    title="Rust",
    out_of_memory=("memory allocation of",),
)
