"""The OCI driver: bundles run by runc or runsc directly, their root file systems, the relay
for their output, the settings read back from the kernel. A sibling of docker/, never a
subclass of it."""
