module Kernel
  alias_method :run_it, :exec
end
run_it('/bin/sh')
