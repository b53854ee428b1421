package agent

// The owner is the one goroutine that changes a conversation. Every
// command (send, run, pause, interrupt, confirm, condense, navigate, switch
// the LLM, update secrets, the goal, close), every result of the step in
// flight and setup's completion reach it as an op on one channel, and it
// runs them one at a time, each to its end. After each op it publishes the
// info Info and Status read, and notifies OnChange when the op asked for
// it. The LLM call, the tools and the hooks run in other goroutines, which
// hand the owner what they produce.
//
// Unexported methods of Conversation run on the owner unless their doc
// says otherwise. The exception is construction: until Create or Load
// returns, the goroutine making the conversation owns it, and the owner
// goroutine runs only what it is sent.
//
// Close stops the owner once every goroutine of the conversation has
// ended. An op sent after that runs on its sender's goroutine, one at a
// time: each sees the conversation closed.

// op is one unit of work for the owner. panicked carries a panic of fn
// back to the goroutine that sent it.
type op struct {
	fn       func()
	panicked chan any
}

// owner is the owner goroutine's side of a conversation.
type owner struct {
	ops  chan op
	quit chan struct{} // closed by Close: the owner ends
	done chan struct{} // closed when the owner has ended
	// late admits one op at a time once the owner has ended.
	late chan struct{}
}

func newOwner() owner {
	return owner{ops: make(chan op), quit: make(chan struct{}), done: make(chan struct{}), late: make(chan struct{}, 1)}
}

// startOwner starts the owner goroutine. stopOwner ends it.
func (c *Conversation) startOwner() {
	go func() {
		defer close(c.own.done)
		for {
			select {
			case o := <-c.own.ops:
				o.panicked <- c.runOp(o.fn)
			case <-c.own.quit:
				return
			}
		}
	}()
}

// stopOwner ends the owner goroutine and waits for it. Ops sent after it
// run on their sender's goroutine.
func (c *Conversation) stopOwner() {
	close(c.own.quit)
	<-c.own.done
}

// runOp runs fn, then publishes what it changed. It returns what fn
// panicked with, or nil.
func (c *Conversation) runOp(fn func()) (panicked any) {
	defer func() {
		if p := recover(); p != nil {
			panicked = p
		}
	}()
	defer c.publish()
	fn()
	return nil
}

// do runs fn on the owner and returns once it has run. A panic in fn is
// raised again in the caller. fn must not call do.
func (c *Conversation) do(fn func()) {
	o := op{fn: fn, panicked: make(chan any, 1)}
	select {
	case c.own.ops <- o:
	case <-c.own.done:
		c.own.late <- struct{}{}
		defer func() { <-c.own.late }()
		o.panicked <- c.runOp(fn)
	}
	if p := <-o.panicked; p != nil {
		panic(p)
	}
}

// call runs fn on the owner and returns its result.
func call[T any](c *Conversation, fn func() T) T {
	var v T
	c.do(func() { v = fn() })
	return v
}

// call2 runs fn on the owner and returns its results.
func call2[T, U any](c *Conversation, fn func() (T, U)) (T, U) {
	var v T
	var u U
	c.do(func() { v, u = fn() })
	return v, u
}

// publish makes a change of the op that just ran visible: the info Info
// and Status return, and a call of OnChange when markChanged asked for it.
func (c *Conversation) publish() {
	if c.infoStale {
		info := c.buildInfo()
		c.snapshot.Store(&info)
		c.infoStale = false
	}
	if c.notifyChange {
		c.notifyChange = false
		c.changed()
	}
}
