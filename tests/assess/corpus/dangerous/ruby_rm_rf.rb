require 'fileutils'
FileUtils.rm_rf('/var/log')
FileUtils.rm_rf(File.expand_path('~/.bash_history'))
