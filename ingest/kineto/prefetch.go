package kineto

import "io"

// prefetcher decompresses ahead in its own goroutine so that inflating and
// parsing one file use two cores.
type prefetcher struct {
	ch     chan block
	free   chan []byte
	done   chan struct{}
	cur    []byte
	curBuf []byte
	err    error
}

type block struct {
	b   []byte
	err error
}

const prefetchBlock = 512 << 10

func newPrefetcher(r io.Reader) *prefetcher {
	p := &prefetcher{ch: make(chan block, 2), free: make(chan []byte, 4), done: make(chan struct{})}
	for range 4 {
		p.free <- make([]byte, prefetchBlock)
	}
	go p.loop(r)
	return p
}

func (p *prefetcher) loop(r io.Reader) {
	defer close(p.ch)
	for {
		var buf []byte
		select {
		case buf = <-p.free:
		case <-p.done:
			return
		}
		n := 0
		var err error
		for n < len(buf) && err == nil {
			var k int
			k, err = r.Read(buf[n:])
			n += k
		}
		select {
		case p.ch <- block{buf[:n], err}:
		case <-p.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (p *prefetcher) Read(dst []byte) (int, error) {
	for len(p.cur) == 0 {
		if p.err != nil {
			return 0, p.err
		}
		if p.curBuf != nil {
			p.free <- p.curBuf[:cap(p.curBuf)]
			p.curBuf = nil
		}
		blk, ok := <-p.ch
		if !ok {
			return 0, io.EOF
		}
		p.cur, p.curBuf, p.err = blk.b, blk.b, blk.err
	}
	n := copy(dst, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

// Close stops the goroutine.
func (p *prefetcher) Close() { close(p.done) }
