package colossus

// WithOptions returns a client with other defaults over this client's connection, as
// Python's with_options and TypeScript's withOptions: no new connection, no new trust
// checks, the same sidecar. It takes [WithTimeout] (the default per-call deadline; 0 or
// negative: none) and [WithRetry] (the read and reconnect policy; unset fields take the
// defaults); any other option is refused, as is an invalid policy. Calls through either
// client share the connection, and closing either closes both.
func (c *Client) WithOptions(opts ...CallOption) (*Client, error) {
	cfg, err := collectFor("Client.WithOptions", opts, "WithTimeout", "WithRetry")
	if err != nil {
		return nil, err
	}
	timeout, retry := cfg.timeout, cfg.retry
	o := c.opts
	if timeout != nil {
		o.Timeout = *timeout
		if *timeout <= 0 {
			o.Timeout = -1 // ClientOptions spells "no deadline" as a negative value
		}
	}
	if retry != nil {
		o.Retry = *retry
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	root := c
	if c.root != nil {
		root = c.root
	}
	d := &Client{opts: o, log: c.log, root: root}
	d.Runs = &Runs{c: d}
	d.Artifacts = &Artifacts{c: d}
	return d, nil
}
