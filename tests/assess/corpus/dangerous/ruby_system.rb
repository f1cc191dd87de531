host = ARGV.fetch(0, 'localhost')
system("ping -c 1 #{host}")
