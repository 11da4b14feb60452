package gitsync

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// blobs reads the blobs ids from the repository, one git process for
// all of them, and gives each to fn in order. A blob git does not have
// is an error.
func (g *git) blobs(ctx context.Context, ids []string, fn func(id string, data []byte) error) error {
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.bin, "cat-file", "--batch")
	cmd.Dir, cmd.Env, cmd.SysProcAttr = g.dir, g.env, gitAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		w := bufio.NewWriter(stdin)
		for _, id := range ids {
			fmt.Fprintln(w, id)
		}
		w.Flush()
		stdin.Close()
	}()
	r := bufio.NewReaderSize(stdout, 64<<10)
	var ferr error
	for _, id := range ids {
		header, err := r.ReadString('\n')
		if err != nil {
			ferr = fmt.Errorf("gitsync: reading blob %s: %w", id, err)
			break
		}
		f := strings.Fields(header)
		if len(f) != 3 || f[1] != "blob" {
			ferr = fmt.Errorf("gitsync: no blob %s in the repository (git said %q)", id, strings.TrimSpace(header))
			break
		}
		size, err := strconv.Atoi(f[2])
		if err != nil {
			ferr = fmt.Errorf("gitsync: blob %s: %w", id, err)
			break
		}
		data := make([]byte, size+1)
		if _, err := io.ReadFull(r, data); err != nil {
			ferr = fmt.Errorf("gitsync: reading blob %s: %w", id, err)
			break
		}
		if ferr = fn(id, data[:size]); ferr != nil {
			break
		}
	}
	if ferr != nil {
		cancel()
		_ = cmd.Wait()
		return ferr
	}
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &GitError{Args: []string{"cat-file", "--batch"}, Stderr: errb.String(), Err: err}
	}
	return nil
}
