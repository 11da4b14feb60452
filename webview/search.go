package webview

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mailfs/mailfs/maildir"
)

// searchBudget is how much the search keeps in memory: message text
// (subjects, bodies, senders, each twice: as written and in lower case)
// and about 160 bytes a message besides. The folders that do not fit are
// read from the disk at each search, as before it kept anything.
const searchBudget = 256 << 20

// A search is answered from what the server keeps of each folder: every
// message in it, parsed, under the folder's stamp ([maildir.Store.Stamp],
// the folder index's rule, as the overview keeps what it reads). A search
// stats each folder, and of those whose stamp moved reads again only the
// files that changed (by the folder index's rule for files: name, inode
// and change time) — after a send, one file, not the town's fifty
// thousand — then tests the kept messages with the command line's matcher.
// Its answer is a full scan's (TestSearchIsAFullScan): every change made
// through a folder moves its stamp; a file rewritten in place under its own
// name shows when its folder next changes, as in the folder index.

// A keptMessage is a message the search keeps, with its subject, body
// and sender in lower case, joined by NULs: a word of the query that is
// not in it is in none of them, and the message is passed over without
// the matcher's case folding of each field.
type keptMessage struct {
	m     *maildir.Message
	lower string
}

// A keptFolder is what the search keeps of a folder: the store's read of
// it, which the next read starts from (reading only the files that
// changed), and its messages with their lower-case text.
type keptFolder struct {
	read *maildir.FolderRead
	kept []keptMessage
}

// folderMessages returns every message of box b's folder (its archive
// when archived), oldest first, through the search's cache: when the
// folder's stamp moved, only its files that changed are read
// ([maildir.Store.Reread]). The messages are shared: a caller changes
// none.
func (s *Server) folderMessages(b maildir.Address, archived bool) ([]keptMessage, error) {
	v, err := s.texts.getSized(s.Store, folderKey{box: b, archived: archived, use: "search"}, func(old any) (any, int64, error) {
		var prev *maildir.FolderRead
		lower := map[*maildir.Message]string{}
		if was, ok := old.(*keptFolder); ok {
			prev = was.read
			for _, k := range was.kept {
				lower[k.m] = k.lower
			}
		}
		read, err := s.Store.Reread(b, archived, prev)
		if err != nil {
			return nil, 0, err
		}
		f := &keptFolder{read: read, kept: make([]keptMessage, len(read.Messages))}
		size := int64(0)
		for i, m := range read.Messages {
			l, ok := lower[m]
			if !ok {
				l = strings.ToLower(m.Subject) + "\x00" + strings.ToLower(m.Body) + "\x00" + strings.ToLower(m.From)
			}
			f.kept[i] = keptMessage{m, l}
			size += int64(160 + len(m.Subject) + len(m.Body) + len(m.From) + 2*len(m.ID) + len(l))
		}
		return f, size, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*keptFolder).kept, nil
}

// warmSearch reads what a search keeps of every folder, until ctx ends:
// Serve starts it, so that the first search finds the town read.
func (s *Server) warmSearch(ctx context.Context) {
	boxes, err := s.allBoxes()
	if err != nil {
		return // the first search reads what it needs, and says what fails
	}
	for _, b := range boxes {
		for _, archived := range []bool{false, true} {
			if ctx.Err() != nil {
				return
			}
			s.folderMessages(b, archived)
		}
	}
}

// searchFolder returns the messages of box b's folder (or its archive)
// that m matches, oldest first. terms (in lower case) are words m's
// matches all hold in the subject, the body or the sender: a message
// without one of them is passed over untested.
func (s *Server) searchFolder(b maildir.Address, archived bool, m *maildir.Matcher, terms []string) ([]*maildir.Message, error) {
	kept, err := s.folderMessages(b, archived)
	if err != nil {
		return nil, err
	}
	var out []*maildir.Message
next:
	for _, k := range kept {
		for _, t := range terms {
			if !strings.Contains(k.lower, t) {
				continue next
			}
		}
		if m.Match(k.m) {
			out = append(out, k.m)
		}
	}
	return out, nil
}

// searchTown searches every mailbox, queue and channel (and their
// archives when archived), one at a time, so that a folder that cannot be
// read — an archive that is a symbolic link, which the store refuses to
// follow — is named among the skipped and the rest is still searched.
// The answer is [maildir.Store.Search]'s over the same folders, oldest
// first; terms are as searchFolder's.
func (s *Server) searchTown(ctx context.Context, m *maildir.Matcher, terms []string, archived bool) ([]*maildir.Message, []string, error) {
	boxes, err := s.allBoxes()
	if err != nil {
		return nil, nil, err
	}
	var out []*maildir.Message
	var skipped []string
	for _, b := range boxes {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		found, err := s.searchFolder(b, false, m, terms)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", b, err))
			continue
		}
		if archived {
			old, err := s.searchFolder(b, true, m, terms)
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("%s's archive: %v", b, err))
			} else if len(old) > 0 {
				found = append(slices.Clip(found), old...)
				slices.SortFunc(found, byTime)
			}
		}
		out = append(out, found...)
	}
	slices.SortStableFunc(out, func(a, b *maildir.Message) int { return a.Timestamp.Compare(b.Timestamp) })
	return out, skipped, nil
}

// byTime orders messages as the store lists them: by time, then id.
func byTime(a, b *maildir.Message) int {
	if c := a.Timestamp.Compare(b.Timestamp); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}
