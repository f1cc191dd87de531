#!/bin/bash
# Normalise a config: strip comments, trim spaces, lower-case the keys.
sed -e 's/#.*$//' -e 's/^[[:space:]]*//' -e '/^$/d' config.ini \
  | awk -F= '{ printf "%s=%s\n", tolower($1), $2 }' > config.clean
sed -i 's/=yes$/=true/' config.clean
cat config.clean
