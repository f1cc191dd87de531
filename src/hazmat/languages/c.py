"""C (gnu17) with gcc."""

from types import MappingProxyType

from hazmat.languages import BUILD_DIR, IMAGE_VERSION, Language, SelfTest

LANGUAGE = Language(
    name="c",
    image=f"hazmat/gcc:{IMAGE_VERSION}",
    source_name="main.c",
    extensions=(".c",),
    # C17 with POSIX and GNU's declarations (fork, strdup, getline), as graders expect;
    # libcrypto is linked only when the program uses it (--as-needed): graders pass
    # no flags, and a program may include <openssl/md5.h>
    build=f"mkdir -p {BUILD_DIR} && exec gcc -std=gnu17 -O2 -pipe -o {BUILD_DIR}/main"
    " ./*.c -Wl,--as-needed -lcrypto -lm",
    run=f"exec {BUILD_DIR}/main",
    exec_tmp=True,
    version=(
        '#include <stdio.h>\n'
        'int main(void) {\n'
        '    printf("%d.%d.%d\\n", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);\n'
        '    return 0;\n'
        '}\n'
    ),
    hello='#include <stdio.h>\nint main(void) { printf("1\\n"); return 0; }\n',
    rank=5,
    analysers=("c-family",),
    names=MappingProxyType(
        {
            "polygon": ("c.",),
            "piston": ("c", "gcc"),
            "judge0": ("50", "48", "49", "75"),
        }
    ),
    self_test=SelfTest(
        greet=(
            '#include <stdio.h>\nint main(void) {\n    char who[64];\n'
            '    if (scanf("%63s", who) != 1) return 1;\n    printf("hello %s\\n", who);\n'
            '    return 0;\n}\n'
        ),
        streams=(
            '#include <stdio.h>\n'
            'int main(void) { puts("out"); fputs("err\\n", stderr); return 3; }\n'
        ),
        compile_error=('int main(void) { return undefined_name; }\n', 'undefined_name'),
    ),
    title="C",
)
