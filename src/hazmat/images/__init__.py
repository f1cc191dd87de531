"""Image building: hazmat's standard images from Debian packages (recipes.py, toolchains.py,
in a chroot: chroot.py, debian.py), users' own images on top of them (custom.py), the cache of
built images by recipe digest (cache.py), and the builder that loads them into the engine
(builder.py). Only `hazmat images`, `hazmat doctor` and the setup scripts use it: the run path
never imports it (tests/test_layering.py)."""
