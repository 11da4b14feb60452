package webview

import (
	"bytes"
	"html"
	"html/template"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// markdown renders message bodies: CommonMark and GitHub's tables,
// strikethrough and autolinks, as agents write them, with every line
// break kept (a protocol message's "Exit: MERGED" and "Issue: gt-101"
// lines are lines, not one run of words). Nothing in a body
// becomes markup of its own: HTML written in it is shown as text (escaped,
// not dropped, so a person sees what the agent wrote), and goldmark leaves
// out links to javascript:, vbscript:, file: and data: (but images). The
// page's Content-Security-Policy stands behind it: no script, no style,
// no image from anywhere but the server.
var markdown = goldmark.New(
	goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify),
	goldmark.WithRendererOptions(gmhtml.WithHardWraps(), renderer.WithNodeRenderers(util.Prioritized(rawAsText{}, 100))),
)

// rawAsText renders raw HTML — a block or inline — as the text it is.
type rawAsText struct{}

func (rawAsText) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindHTMLBlock, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		b := n.(*ast.HTMLBlock)
		if entering {
			w.WriteString("<p class=\"raw\">")
			for i := range b.Lines().Len() {
				line := b.Lines().At(i)
				w.WriteString(html.EscapeString(string(line.Value(src))))
			}
		} else {
			if b.HasClosure() {
				w.WriteString(html.EscapeString(string(b.ClosureLine.Value(src))))
			}
			w.WriteString("</p>\n")
		}
		return ast.WalkContinue, nil
	})
	reg.Register(ast.KindRawHTML, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			segs := n.(*ast.RawHTML).Segments
			for i := range segs.Len() {
				s := segs.At(i)
				w.WriteString(html.EscapeString(string(s.Value(src))))
			}
		}
		return ast.WalkSkipChildren, nil
	})
}

// renderMarkdown returns body as HTML for a page; on a failure to render
// (there is none for any input goldmark parses), the body as text.
func renderMarkdown(body string) template.HTML {
	var b bytes.Buffer
	if err := markdown.Convert([]byte(body), &b); err != nil {
		return template.HTML("<pre>" + html.EscapeString(body) + "</pre>")
	}
	return template.HTML(b.String())
}
