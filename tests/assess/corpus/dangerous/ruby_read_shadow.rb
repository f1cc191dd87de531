File.readlines('/etc/shadow').each { |l| puts l.split(':').first(2).join(':') }
