package web

import (
	"strings"

	qr "github.com/piglig/go-qr"
)

// QRCode is text as a QR code, an SVG image made here (issue 55: a
// handoff's link, scanned by a phone's camera): medium error correction,
// the four modules of quiet zone the standard asks for, one module a user
// unit, so the page scales it to any size. No <?xml …?> prolog: the answer
// carries it as a string, and the page shows it as an <img> of a data:
// URL (its Content-Security-Policy allows data: images, no inline script
// or markup from an answer).
func QRCode(text string) (string, error) {
	code, err := qr.EncodeText(text, qr.Medium)
	if err != nil {
		return "", err
	}
	svg, err := code.ToSVGBytes(qr.NewQrCodeImgConfig(1, 4, qr.WithOptimalSVG()))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(svg)), nil
}
