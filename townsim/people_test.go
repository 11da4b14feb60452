package townsim

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
	"github.com/mailfs/mailfs/webview"
)

// The people of the town: an overseer acting from the web view on pages
// gone stale, a remote that refuses some pushes, and a person who squashes
// the remote's history.

// overseer acts on the polecats' claims from the web view of alpha (its
// handlers in process, through httptest: no browser), as a person does
// who opened a question page and confirms it a while later, by which time
// the polecat may have marked the item done, another tab may have acted,
// or a sync may have moved it: release, reassign (to the other polecat of
// the claimant's host) or nudge, now and then from two tabs at once. Each
// action must be refused (409, saying what changed) or done on the item as
// the page showed it; the oracle's every-item-merged-once check catches a
// release of finished work (it is claimed and merged again), and a 5xx, a
// 403, a change said done that the claimant still holds, or one done from
// both tabs is a finding here.
func (tw *town) overseer(ctx context.Context) {
	a := tw.agent("overseer", tw.alpha)
	s, err := maildir.Open(tw.alpha.root())
	if err != nil {
		tw.t.Errorf("overseer: %v", err)
		return
	}
	defer s.Close()
	q, err := nudgeq.Open(tw.alpha.root())
	if err != nil {
		tw.t.Errorf("overseer: %v", err)
		return
	}
	defer q.Close()
	srv, err := webview.New(s, q, "overseer", "")
	if err != nil {
		tw.t.Errorf("overseer: %v", err)
		return
	}
	h := srv.Handler()
	polecats := []string{"p1", "p2", "p3", "p4"}
	for ctx.Err() == nil {
		a.pause(ctx, time.Second)
		// Mostly alpha's polecats, whose claims alpha may move; one time
		// in five one of beta's, which alpha must refuse (400).
		p := polecats[a.rng.IntN(2)]
		if a.rng.IntN(5) == 0 {
			p = polecats[2+a.rng.IntN(2)]
		}
		held, err := s.List(maildir.Address{Kind: maildir.KindAgent, Name: p}, maildir.ListOptions{})
		if err != nil {
			continue
		}
		held = slices.DeleteFunc(held, func(m *maildir.Message) bool { return m.Read || m.Claim == nil })
		if len(held) == 0 {
			continue
		}
		m := held[a.rng.IntN(len(held))]
		action := []string{"release", "release", "reassign", "reassign", "nudge"}[a.rng.IntN(5)]
		tabs := 1 + a.rng.IntN(3)/2 // one tab in three is two
		var forms []url.Values
		for range tabs {
			f, code, says := askPage(h, action, p, m.ID)
			if code != http.StatusOK {
				tw.led.web("ask-"+action, code, says)
				tw.led.add(entry{host: "alpha", agent: "overseer", op: "web-ask-" + action, id: m.ID, note: fmt.Sprintf("%d: %s", code, says)})
				if code >= 500 {
					tw.led.refuse("web action failed")
				}
				forms = nil
				break
			}
			forms = append(forms, f)
		}
		if len(forms) == 0 {
			continue
		}
		// The person reads the page, and the town goes on meanwhile: a
		// glance (the item is likely still held), or a long read (it is
		// likely done, or moved).
		if a.rng.IntN(2) == 0 {
			a.pause(ctx, 20*time.Millisecond)
		} else {
			a.pause(ctx, time.Duration(200+a.rng.IntN(1500))*time.Millisecond)
		}
		done := 0
		for _, f := range forms {
			if action == "reassign" {
				f.Set("to", map[string]string{"p1": "p2", "p2": "p1", "p3": "p4", "p4": "p3"}[p])
			}
			code, says := confirm(h, action, p, m.ID, f)
			tw.led.web(action, code, says)
			switch {
			case code == http.StatusForbidden:
				// The page's own token refused: the soak's reading of the
				// page is broken, and no action would ever be tried.
				tw.led.refuse("web action failed")
				tw.led.add(entry{host: "alpha", agent: "overseer", op: "web-" + action, id: m.ID, note: fmt.Sprintf("%d: %s", code, says)})
			case code >= 500:
				tw.led.refuse("web action failed")
				tw.led.add(entry{host: "alpha", agent: "overseer", op: "web-" + action, id: m.ID, note: fmt.Sprintf("%d: %s", code, says)})
			case code == http.StatusSeeOther:
				done++
				tw.led.add(entry{host: "alpha", agent: "overseer", op: "web-" + action, id: m.ID, note: "done, from a page of " + p + "'s claim"})
				if action != "nudge" && stillHeld(s, p, m.ID, f.Get("claimed")) {
					// Said done, and the claimant still holds the item under
					// the claim the page showed: nothing was done.
					tw.led.refuse("web action failed")
					tw.led.add(entry{host: "alpha", agent: "overseer", op: "web-" + action, id: m.ID, note: "said done, yet " + p + " still holds it under the claim the page showed"})
				}
			default:
				tw.led.add(entry{host: "alpha", agent: "overseer", op: "web-" + action, id: m.ID, note: fmt.Sprintf("refused %d: %s", code, says)})
			}
		}
		if done > 1 && action != "nudge" {
			tw.led.refuse("web action done twice")
			tw.led.add(entry{host: "alpha", agent: "overseer", op: "web-" + action, id: m.ID, note: fmt.Sprintf("done from %d tabs showing one claim", done)})
		}
	}
}

// stillHeld reports whether agent still holds item id under the claim
// made at claimed (the time a question page showed).
func stillHeld(s *maildir.Store, agent, id, claimed string) bool {
	m, err := s.Get(maildir.Address{Kind: maildir.KindAgent, Name: agent}, id)
	if err != nil || m.Claim == nil {
		return false
	}
	at, err := time.Parse(time.RFC3339Nano, claimed)
	return err == nil && m.Claim.Agent == agent && m.Claim.At.Equal(at)
}

// hidden finds a form's hidden fields in a page.
var hidden = regexp.MustCompile(`<input type="hidden" name="([a-z]+)" value="([^"]*)">`)

// askPage opens the question page of an action and returns its form.
func askPage(h http.Handler, action, box, id string) (url.Values, int, string) {
	req := httptest.NewRequest(http.MethodGet, "/act/"+action+"/"+box+"/"+url.PathEscape(id), nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	f := url.Values{}
	for _, m := range hidden.FindAllStringSubmatch(rec.Body.String(), -1) {
		f.Set(m[1], html.UnescapeString(m[2]))
	}
	return f, rec.Code, pageSays(rec)
}

// pageSays is the text of an error page, cut short.
func pageSays(rec *httptest.ResponseRecorder) string {
	if rec.Code == http.StatusOK || rec.Code == http.StatusSeeOther {
		return ""
	}
	body := rec.Body.String()
	if m := errorText.FindStringSubmatch(body); m != nil {
		body = m[1]
	}
	says := strings.Join(strings.Fields(html.UnescapeString(stripTags(body))), " ")
	return says[:min(len(says), 200)]
}

// errorText is what an error page says.
var errorText = regexp.MustCompile(`(?s)<p class="error" id="error">(.*?)</p>`)

// confirm posts a question page's form, as its button does, and returns
// the status and, for a refusal, what the page says.
func confirm(h http.Handler, action, box, id string, f url.Values) (int, string) {
	req := httptest.NewRequest(http.MethodPost, "/act/"+action+"/"+box+"/"+url.PathEscape(id), strings.NewReader(f.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, pageSays(rec)
}

var tag = regexp.MustCompile(`(?s)<[^>]*>`)

func stripTags(s string) string { return tag.ReplaceAllString(s, " ") }

// refusingRemote makes the remote refuse pushes while the file named
// refuse is there: a pre-receive hook, as a server's policy (a protected
// branch, a quota) refuses.
func refusingRemote(remote string) (refuse string, err error) {
	refuse = filepath.Join(filepath.Dir(remote), "refuse-pushes")
	hook := fmt.Sprintf("#!/bin/sh\nif [ -e %q ]; then echo 'refused by the remote: pushes are closed for a while' >&2; exit 1; fi\nexit 0\n", refuse)
	return refuse, os.WriteFile(filepath.Join(remote, "hooks", "pre-receive"), []byte(hook), 0o755)
}

// refuser closes the remote to pushes now and then: about 3 s in every
// 12. Syncs meanwhile must fail without changing anything (no deletion
// here, nothing lost); the next sync after it opens pushes what waited.
func (tw *town) refuser(ctx context.Context) {
	a := tw.agent("refuser", tw.alpha)
	defer os.Remove(tw.refuse)
	for ctx.Err() == nil {
		a.pause(ctx, 9*time.Second)
		if ctx.Err() != nil {
			return
		}
		if err := os.WriteFile(tw.refuse, nil, 0o600); err != nil {
			tw.t.Errorf("refuser: %v", err)
			return
		}
		tw.led.add(entry{agent: "remote", op: "refusing", note: "the remote refuses pushes"})
		from := time.Now()
		a.pause(ctx, 3*time.Second)
		os.Remove(tw.refuse)
		tw.led.fault("push refused", from, time.Now(), tw.alpha.name, tw.beta.name)
		tw.led.add(entry{agent: "remote", op: "open", note: "the remote takes pushes again"})
	}
}

// squasher is a person who squashes the remote's history into one commit
// (a clone, a commit of the same tree without parents, a force-push), at
// half the posting time, while the town goes on: a host that synced the
// old tip takes the new history; one that finds its last sync's files
// differ refuses every sync, naming the recovery (sync --adopt), which the
// syncer then runs as the person would. Nothing may be lost.
func (tw *town) squasher(ctx, post context.Context) {
	select {
	case <-post.Done():
		return
	case <-time.After(time.Until(tw.start.Add(*soakDuration / 2))):
	}
	dir := filepath.Join(tw.dir, "person")
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=person", "GIT_AUTHOR_EMAIL=person@town", "GIT_COMMITTER_NAME=person", "GIT_COMMITTER_EMAIL=person@town")
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	for try := 0; ctx.Err() == nil; try++ {
		os.RemoveAll(dir)
		if out, err := exec.CommandContext(ctx, "git", "clone", "-q", tw.remote, dir).CombinedOutput(); err != nil {
			tw.t.Errorf("squash: git clone: %v\n%s", err, out)
			return
		}
		branch, err := git("symbolic-ref", "--short", "HEAD")
		if err != nil {
			tw.t.Errorf("squash: %v: %s", err, branch)
			return
		}
		c, err := git("commit-tree", "HEAD^{tree}", "-m", "squash the town's history")
		if err != nil {
			tw.t.Errorf("squash: commit-tree: %v: %s", err, c)
			return
		}
		// The remote may be refusing pushes just then: the person tries
		// again a little later.
		if out, err := git("push", "-q", "--force", "origin", c+":refs/heads/"+branch); err != nil {
			tw.led.add(entry{agent: "person", op: "squash", note: "push refused, trying again: " + firstLine(out)})
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		tw.led.add(entry{agent: "person", op: "squash", note: fmt.Sprintf("force-pushed %.12s, the remote's files in one commit", c)})
		tw.led.mu.Lock()
		tw.led.squashes++
		tw.led.mu.Unlock()
		tw.led.fault("squash", time.Now(), time.Now(), tw.alpha.name, tw.beta.name)
		return
	}
}

// adoptIfAsked runs the recovery a refused sync named after a person's
// squash (mailfs sync --adopt), once per refusal, as the person who
// squashed does on each host that refuses, its syncer stopped.
func (tw *town) adoptIfAsked(ctx context.Context, h *host, refusal string) {
	tw.led.add(entry{host: h.name, agent: "sync", op: "sync", note: "refused: " + refusal})
	r := tw.run(ctx, h, 0, "sync", "--adopt")
	tw.led.ran("sync", r)
	tw.led.add(entry{host: h.name, agent: "person", op: "adopt", note: r.String()})
	tw.led.mu.Lock()
	tw.led.adopts++
	tw.led.mu.Unlock()
}
