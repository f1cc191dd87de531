import math
import itertools

ops = {"sqrt": 16, "log2": 8, "floor": 2.7}
for name, arg in ops.items():
    func = getattr(math, "sqrt") if name == "sqrt" else getattr(math, name, None)
    print(name, func(arg) if func else None)
print(list(itertools.combinations("abc", 2)))
