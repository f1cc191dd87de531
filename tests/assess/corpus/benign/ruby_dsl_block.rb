class Config
  def self.build(&block)
    cfg = new
    cfg.instance_eval(&block)
    cfg
  end

  def set(key, value)
    (@values ||= {})[key] = value
  end

  def to_s
    @values.inspect
  end
end

puts Config.build { set :threads, 4; set :name, 'demo' }
