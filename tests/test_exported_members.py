import hazmat


def test_all_is_sorted_and_complete() -> None:
    exported = hazmat.__all__

    # isort style, as ruff's RUF022 sorts: CONSTANTS, then Classes, then everything else.
    def kind(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert exported == sorted(exported, key=kind)
    public = {name for name in dir(hazmat) if not name.startswith("_") or name == "__version__"}
    modules = {
        "assess",
        "audit",
        "backends",
        "languages",
        "metrics",
        "models",
        "policy",
        "sandbox",
        "validation",
        "cli",
        "doctor",
        "intake",
        "cli_args",
        "bench",
        "bench_throughput",
        "output_dir",
        "results",
    }
    assert set(exported) == public - modules


def test_every_exported_name_has_a_docstring_or_is_data() -> None:
    for name in hazmat.__all__:
        member = getattr(hazmat, name)
        if isinstance(member, type) or callable(member):
            assert member.__doc__, name
