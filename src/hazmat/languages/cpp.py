"""C++ (C++20) with g++, bits/stdc++.h precompiled for hazmat's flags."""

from types import MappingProxyType

from hazmat.languages import BUILD_DIR, IMAGE_VERSION, Language, SelfTest

# What the C++ image keeps prepared: bits/stdc++.h precompiled for these exact flags (a
# precompiled header is used only with the flags it was made with)
CXX_FLAGS = "-std=c++20 -O2"

LANGUAGE = Language(
    name="cpp",
    image=f"hazmat/gcc:{IMAGE_VERSION}",
    source_name="main.cpp",
    extensions=(".cpp", ".cc", ".cxx", ".c++"),
    build=f"mkdir -p {BUILD_DIR} && exec g++ {CXX_FLAGS} -pipe -o {BUILD_DIR}/main"
    " ./*.cpp -Wl,--as-needed -lcrypto",
    run=f"exec {BUILD_DIR}/main",
    aliases=("c++", "cxx"),
    exec_tmp=True,
    version=(
        '#include <cstdio>\n'
        'int main() {\n'
        '    std::printf("%d.%d.%d\\n", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);\n'
        '}\n'
    ),
    hello="#include <bits/stdc++.h>\nint main() { std::cout << 1 << std::endl; }\n",
    rank=6,
    analysers=("c-family",),
    names=MappingProxyType(
        {
            "polygon": ("cpp.",),
            "sandbox_fusion": ("cpp",),
            "piston": ("c++", "cpp", "g++"),
            "judge0": ("54", "52", "53", "76"),
        }
    ),
    self_test=SelfTest(
        greet=(
            '#include <bits/stdc++.h>\nusing namespace std;\nint main() {\n    string who;\n'
            '    cin >> who;\n    cout << "hello " << who << endl;\n}\n'
        ),
        streams=(
            '#include <iostream>\n'
            'int main() { std::cout << "out\\n"; std::cerr << "err\\n"; return 3; }\n'
        ),
        compile_error=('int main() { std::vector<int> v; }\n', 'vector'),
    ),
    title="C++",
    out_of_memory=("std::bad_alloc",),
)
