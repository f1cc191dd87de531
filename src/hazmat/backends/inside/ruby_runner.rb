
->() {
  # everything of the runner's is local to this lambda: the program's top level (evaluated in
  # TOPLEVEL_BINDING) sees no variable, constant or method of it
  wake, waker = IO.pipe
  Signal.trap("USR2") { waker.syswrite("x") }
  # on stdout, or (started ahead by a session's agent) on a channel of the agent's own
  ready = ENV.fetch("HAZMAT_READY_FD", "1").to_i
  if ready == 1
    STDOUT.syswrite("hazmat-ready\n")
  else
    IO.for_fd(ready, "w", autoclose: true).tap { |io| io.syswrite("hazmat-ready\n") }.close
  end
  wake.read(1)
  Signal.trap("USR2", "DEFAULT")
  [wake, waker].each(&:close)
  die = ->(why) { STDERR.syswrite("hazmat-agent: #{why}\n"); exit!(125) }
  # started ahead, the call's stdin is a file the unpack script wrote once the call came
  if (stdin_file = ENV["HAZMAT_STDIN_FILE"])
    begin
      STDIN.reopen(stdin_file, "r")
    rescue SystemCallError
      die.("cannot open the call's stdin")
    end
  end
  some = ->(size) do
    STDIN.sysread(size)
  rescue IO::WaitReadable
    IO.select([STDIN])
    retry
  rescue EOFError
    die.("truncated job")
  end
  exactly = ->(size) {
    got = "".b
    got << some.([size - got.bytesize, 65536].min) while got.bytesize < size
    got
  }
  line = -> {
    got = "".b
    while (byte = exactly.(1)) != "\n"
      got << byte
    end
    got
  }
  number = ->(field) { field.match?(/\A[0-9]+\z/) ? field.to_i : die.("unknown job format") }
  job = nil
  if ENV["HAZMAT_UNPACK"] == "1"
    sizes = line.().split(" ")
    die.("unknown job format") unless sizes.size == 2
    job = exactly.(number.(sizes[0]))
    exactly.(number.(sizes[1]))  # the shell form, for the run command: not ours
    number.(line.()).times do
      size, name = line.().split(" ", 2)
      die.("unknown job format") if name.nil?
      data = exactly.(number.(size))
      folders = File.dirname(name).split("/").reject { |part| part == "." }
      folders.each_index do |i|
        folder = folders[0..i].join("/")
        Dir.mkdir(folder) unless File.directory?(folder)
      end
      File.binwrite("./#{name}", data)
    end
  end
  # with a build step, or started ahead, the stage script (or the unpack script) left them
  if job.nil? && File.exist?("/tmp/.hazmat-job.json")
    job = File.binread("/tmp/.hazmat-job.json")
    File.delete("/tmp/.hazmat-job.json")
  end
  ENV.keys.each { |name| ENV.delete(name) if name.start_with?("HAZMAT_") }
  # the env and args, as JSON of one shape ({"env": {...}, "args": [...]}, ASCII with \u
  # escapes): read here without the json library, which would change the program's world
  text = ->(quoted) {
    quoted.gsub(/(?:\\u[0-9a-fA-F]{4})+|\\(.)/) do |escape|
      if escape.start_with?("\\u")
        units = escape.scan(/[0-9a-fA-F]{4}/).map(&:hex)
        units.pack("n*").force_encoding("UTF-16BE").encode("UTF-8", invalid: :replace)
      else
        { "n" => "\n", "t" => "\t", "r" => "\r", "b" => "\b", "f" => "\f" }.fetch($1, $1)
      end
    end
  }
  strings = ->(part) { part.scan(/"((?:[^"\\]|\\.)*)"/).map { |(s)| text.(s) } }
  # a program that judges a submission (grade/harness.py): an uncaught exception or a syntax
  # error ends it with 70, which is no testlib code, not 1
  crashed = 1
  if job && !job.empty?
    shape = /\A\{"env": \{(.*)\}, "args": \[(.*)\]\}\z/m.match(job)
    die.("unknown job format") if shape.nil?
    strings.(shape[1]).each_slice(2) do |name, value|
      next crashed = (value == "1" ? 70 : 1) if name == "HAZMAT_HARNESS"
      ENV[name] = value
    end
    ARGV.replace(strings.(shape[2]))
  else
    ARGV.clear
  end
  $0 = "main.rb"
  source = File.read("main.rb", mode: "rb")
  begin
    TOPLEVEL_BINDING.eval(source, "main.rb", 1)
  rescue SystemExit
    raise
  rescue Exception => error
    # as `ruby main.rb` reports it: no frame of this runner
    frames = (error.backtrace || []).reject { |frame| frame.start_with?("-e:") }
    STDOUT.flush rescue nil
    if frames.empty?  # a syntax error: the parser's message, its class on the error's line
      lines = error.message.lines
      at = lines.index { |text| text.include?("syntax error") } || 0
      lines[at] = "#{lines[at].chomp} (#{error.class})\n" unless lines.empty?
      STDERR.write("main.rb: #{lines.join}")
    else
      error.set_backtrace(frames)
      STDERR.write(error.full_message(highlight: false, order: :top))
    end
    exit crashed
  end
}.call
