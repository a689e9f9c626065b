package colossus

import (
	"context"
	"iter"
)

// Pages follows continuation tokens through short and empty pages, yielding each page.
// A worker that returns an empty page with the same token again fails with
// [ErrProtocolViolation] rather than looping forever.
func (r *Runs) Pages(ctx context.Context, opts ...CallOption) iter.Seq2[*RunPage, error] {
	return func(yield func(*RunPage, error) bool) {
		cfg, err := collectFor("Runs.Pages", opts, "WithTimeout", "WithRetry", "WithStatuses", "WithPageSize", "WithPageToken")
		if err != nil {
			yield(nil, err)
			return
		}
		cursor := pageCursor{token: cfg.pageToken}
		for !cursor.done {
			page, err := r.ListPage(ctx, append(opts, WithPageToken(cursor.token))...)
			if err == nil {
				err = cursor.accept(page)
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(page, nil) {
				return
			}
		}
	}
}

// List iterates every matching run across pages (see [Runs.Pages]).
func (r *Runs) List(ctx context.Context, opts ...CallOption) iter.Seq2[Run, error] {
	return func(yield func(Run, error) bool) {
		for page, err := range r.Pages(ctx, opts...) {
			if err != nil {
				yield(Run{}, err)
				return
			}
			for _, run := range page.Runs {
				if !yield(run, nil) {
					return
				}
			}
		}
	}
}

// pageCursor is the I/O-free part of pagination.
type pageCursor struct {
	token string
	done  bool
}

func (c *pageCursor) accept(page *RunPage) error {
	if page.NextPageToken != "" && page.NextPageToken == c.token && len(page.Runs) == 0 {
		return newError(ErrProtocolViolation, ReasonPageNoProgress, "ListRuns returned an empty page with the same continuation token")
	}
	c.token = page.NextPageToken
	c.done = page.NextPageToken == ""
	return nil
}
