def depth(tree):
    if not isinstance(tree, dict) or not tree:
        return 0
    return 1 + max(depth(child) for child in tree.values())

def flatten(items):
    for item in items:
        if isinstance(item, list):
            yield from flatten(item)
        else:
            yield item

print(depth({"a": {"b": {"c": {}}}, "d": {}}))
print(list(flatten([1, [2, [3, [4]]], 5])))
