package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mailfs/mailfs/maildir"
)

// bodyFlags are the ways to give a message body.
type bodyFlags struct {
	Message  []string `short:"m" xor:"body" sep:"none" placeholder:"TEXT" help:"The body (required, or --body-file), given once. \"-m -\" reads it from standard input."`
	BodyFile string   `name:"body-file" xor:"body" placeholder:"FILE" type:"path" help:"Read the body from FILE."`
}

// body returns the body the flags name, reading at most one byte more than
// a message may hold so that an oversized body fails fast. A ^C or SIGTERM
// (ctx ending) while it reads, or before, sends nothing: the command
// returns ctx's error, exit 130, even if the body was read whole (a person
// who forgot the pipe and typed at a terminal must be able to cancel).
func (f *bodyFlags) body(ctx context.Context, stdin io.Reader, optional bool) (string, error) {
	var r io.Reader
	switch {
	case len(f.Message) > 1:
		// A second -m would silently replace the first.
		return "", usage(`one body: -m $'first paragraph\n\nsecond', or -m - to read it from standard input`, "-m given %d times", len(f.Message))
	case f.Message == nil && f.BodyFile == "" && optional:
		return "", nil
	case f.Message == nil && f.BodyFile == "":
		return "", usage(`give one with -m TEXT, -m - (standard input) or --body-file FILE; -m '' sends an empty body`, "no body given")
	case f.Message != nil && f.Message[0] != "-":
		return f.Message[0], nil
	case f.Message != nil:
		r = stdin
	case f.BodyFile == "-":
		return "", usage("-m - reads the body from standard input; a file named - is ./-", "--body-file -: standard input is -m -")
	default:
		file, err := os.Open(f.BodyFile)
		if err != nil {
			return "", fmt.Errorf("--body-file: %w", err)
		}
		defer file.Close()
		r = file
	}
	// A message file keeps EditRoom of MaxSize free for later edits: a
	// body past what is left cannot be sent, so reading stops there.
	limit := maildir.MaxSize - maildir.EditRoom
	b, err := readAll(ctx, io.LimitReader(r, int64(limit)+1))
	if err != nil && r != stdin && ctx.Err() == nil {
		return "", fmt.Errorf("--body-file: %w", err)
	}
	if err != nil {
		return "", err
	}
	if len(b) > limit {
		return "", fmt.Errorf("%w: the body is over %d bytes", maildir.ErrTooLarge, limit)
	}
	// Nothing on standard input is a body lost (a closed stdin, which Go
	// reads as /dev/null, a pipe from a command that failed), not an empty
	// one meant: that is -m ''.
	if len(b) == 0 && r == stdin {
		return "", withHint(errors.New("-m -: standard input was empty (or closed)"), "pipe the body in (printf ... | mailfs send ... -m -); -m '' sends an empty body")
	}
	return string(b), nil
}

// needAgent returns the address named on the command line or by
// $MAILFS_AGENT (kong fills both into the same field), for the store to
// resolve.
func needAgent(agent string) (string, error) {
	if agent == "" {
		return "", usage("name the agent, or set MAILFS_AGENT", "no agent given")
	}
	return agent, nil
}

// mailbox returns the folder a command acting on "my" mail means by arg
// (or $MAILFS_AGENT, which kong puts in arg): a bare name is always the
// agent, never a group, queue or channel that shares its name; queue:NAME
// and channel:NAME are taken as written. The result is written so that the
// store cannot read it another way.
func mailbox(arg string) (maildir.Address, error) {
	arg, err := needAgent(arg)
	if err != nil {
		return maildir.Address{}, err
	}
	return maildir.ParseMailbox(arg)
}

// readAll reads r to its end unless ctx ends first. A read blocked on a
// terminal or a pipe cannot be cut short, so it goes on in its goroutine
// and its result is dropped: the process is about to exit.
func readAll(ctx context.Context, r io.Reader) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(r)
		done <- result{b, err}
	}()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case res := <-done:
		if err := ctx.Err(); err != nil {
			return nil, err // the signal came as the read ended
		}
		return res.b, res.err
	}
}
