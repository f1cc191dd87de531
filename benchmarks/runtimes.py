"""Figures for the runtimes issue: warm runs per image (Go's build with the prebuilt standard
library, python-data's preloaded libraries), image sizes, and what the allowlist proxy costs
per connection (host-side, and from inside a container through the relay).

The proxy is measured against a TLS server on 127.0.0.2 started here (tests/egress's helper):
a TLS handshake and one request/answer, directly and through the proxy's unix socket, one
after the other in one run. Medians over `--runs`. With --write, into docs/benchmarks.md.

    .venv/bin/python benchmarks/runtimes.py --runs 30 --write
"""

from __future__ import annotations

import argparse
import ipaddress
import socket
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from docs_section import write_section

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "egress"))
from tls_servers import TLSServer, connect_through, start_servers

from hazmat import Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.backends.pool.warm import PoolBackend
from hazmat.egress.proxy import SOCKET_NAME, EgressProxy
from hazmat.policy import PoolSettings
from hazmat.policy.file import parse_policy

PROGRAMS = {
    ("go", None): 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println(1)\n}\n',
    ("python", None): "print(1)\n",
    ("javascript", None): "console.log(1)\n",
    ("python", "python-data"): "import pandas, matplotlib.pyplot\nprint(1)\n",
}


def warm_runs(runs: int) -> list[str]:
    rows = []
    pool = PoolBackend(DockerBackend(), PoolSettings(size=1, refill_concurrency=1))
    with Sandbox(parse_policy({}), backend=pool) as sandbox:
        for (language, image), code in PROGRAMS.items():
            for runtime in ("runc", "runsc"):
                times, compiles = [], []
                for i in range(runs + 2):
                    started = time.perf_counter()
                    result = sandbox.run(
                        code, language, image=image, runtime=runtime, trust="unknown"
                    )
                    elapsed = (time.perf_counter() - started) * 1000
                    if result.stdout != "1\n":
                        raise SystemExit(f"{language}: {result.error} {result.stderr}")
                    if i >= 2 and result.pooled:
                        times.append(elapsed)
                        compiles.append(result.compile_ms or 0.0)
                    spec_wait(sandbox, pool)
                name = image or language
                build = f"{statistics.median(compiles):.0f}" if language == "go" else "–"
                median = statistics.median(times)
                rows.append(f"| {name} | {runtime} | {median:.0f} | {build} | {len(times)} |")
    return rows


def spec_wait(sandbox: Sandbox, pool: PoolBackend) -> None:
    for spec in list(pool._ready) + list(pool._pending):  # refill before the next timed run
        pool.wait_ready(spec, 1, 120)


def image_sizes() -> list[str]:
    api = Engine().api
    rows = []
    for name in ("python", "python-data", "node", "go"):
        for tag in ("1", "2"):
            found = api.images(name=f"hazmat/{name}:{tag}")
            if found:
                rows.append(f"| hazmat/{name}:{tag} | {found[0]['Size'] / 1e6:.0f} |")
    return rows


def _exchange(sock: socket.socket, server: TLSServer) -> None:
    with server.client_context().wrap_socket(sock, server_hostname="allowed.test") as tls:
        tls.sendall(b"ping")
        tls.recv(100)


def proxy_overhead(runs: int) -> list[str]:
    servers, listeners = start_servers(Path(tempfile.mkdtemp()))
    server = servers["127.0.0.2"]
    proxy = EgressProxy(
        Path(tempfile.mkdtemp()),
        resolver=lambda host, _: ["127.0.0.2"],
        reachable=[ipaddress.ip_network("127.0.0.2/32")],
    )
    gate = proxy.open(("allowed.test",), (server.port,))
    direct, proxied = [], []
    for _ in range(runs * 3):
        started = time.perf_counter()
        _exchange(socket.create_connection(("127.0.0.2", server.port)), server)
        direct.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        sock, _ = connect_through(gate.directory / SOCKET_NAME, f"allowed.test:{server.port}")
        _exchange(sock, server)
        proxied.append((time.perf_counter() - started) * 1000)
    proxy.close_gate(gate)
    rows = [
        f"| host: direct | {statistics.median(direct):.2f} |",
        f"| host: through the proxy's socket | {statistics.median(proxied):.2f} |",
    ]
    rows += inside(server, runs)
    proxy.close()
    for listener in listeners:
        listener.close()
    return rows


INSIDE = """
import socket, ssl, statistics, time
ctx = ssl.create_default_context(cafile="ca.pem")
times = []
for _ in range(RUNS):
    t = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT allowed.test:PORT HTTP/1.1\\r\\n\\r\\n")
    s.recv(4096)
    with ctx.wrap_socket(s, server_hostname="allowed.test") as tls:
        tls.sendall(b"ping")
        tls.recv(100)
    times.append((time.perf_counter() - t) * 1000)
print(round(statistics.median(times), 2))
"""


def inside(server: TLSServer, runs: int) -> list[str]:
    proxy = EgressProxy(
        resolver=lambda host, _: ["127.0.0.2"], reachable=[ipaddress.ip_network("127.0.0.2/32")]
    )
    network = {"allow": ["allowed.test"], "ports": [server.port]}
    policy = parse_policy({"trust": {"unknown": {"network": network}}})
    rows = []
    code = INSIDE.replace("RUNS", str(runs * 3)).replace("PORT", str(server.port))
    with Sandbox(policy, backend=DockerBackend(), egress=proxy) as sandbox:
        for runtime in ("runc", "runsc"):
            result = sandbox.run(
                code, "python", trust="unknown", runtime=runtime, files={"ca.pem": server.ca_pem}
            )
            where = f"in a container ({runtime}), through the relay"
            rows.append(f"| {where} | {result.stdout.strip()} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    warm = warm_runs(args.runs)
    sizes = image_sizes()
    proxy = proxy_overhead(args.runs)
    text = "\n".join(
        [
            f"`benchmarks/runtimes.py --runs {args.runs}`, {datetime.now(UTC):%Y-%m-%d}: warm "
            "(pooled) runs end to end through `Sandbox.run`, trust `unknown` (standard limits); "
            "Go's figure includes its build, shown apart:",
            "",
            "| image | runtime | warm run, median ms | of which build ms | runs |",
            "|---|---|---:|---:|---:|",
            *warm,
            "",
            "Image sizes as the engine reports them:",
            "",
            "| image | MB |",
            "|---|---:|",
            *sizes,
            "",
            f"The allowlist proxy: one TLS connection (CONNECT, handshake, one request and "
            f"answer) to a server on 127.0.0.2, median of {args.runs * 3}:",
            "",
            "| path | median ms per connection |",
            "|---|---:|",
            *proxy,
        ]
    )
    print(text)
    if args.write:
        write_section("runtimes", "Runtimes, images and the allowlist proxy", text)


if __name__ == "__main__":
    main()
