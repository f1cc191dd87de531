out = `cat /etc/passwd | cut -d: -f1`
puts out.lines.size
