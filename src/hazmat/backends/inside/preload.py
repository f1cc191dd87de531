
def _hazmat_preload(path="@PRELOAD_FILE@"):
    # an image's own warm-up (python-data imports numpy, pandas and matplotlib), paid for
    # before the job exists; a failure here is the program's to meet when it imports
    try:
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        exec(code, {"__name__": "__hazmat_preload__"})
    except Exception:
        pass
