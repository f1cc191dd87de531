require 'yaml'

doc = YAML.safe_load(File.read('settings.yml'), permitted_classes: [Symbol])
doc.each { |k, v| puts "#{k}: #{v}" }
