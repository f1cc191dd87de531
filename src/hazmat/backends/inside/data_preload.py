import os, shutil
_dir = os.environ.get("MPLCONFIGDIR")
if _dir and not os.path.exists(_dir):
    shutil.copytree("/usr/share/hazmat/matplotlib", _dir)
import numpy, pandas, matplotlib, matplotlib.pyplot
del os, shutil, _dir
