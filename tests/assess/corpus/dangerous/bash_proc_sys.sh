#!/bin/bash
echo 0 > /proc/sys/kernel/randomize_va_space
echo '/tmp/x %p' > /proc/sys/kernel/core_pattern
