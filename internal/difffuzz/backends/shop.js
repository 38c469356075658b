// The differential fuzzer's Express 4 shop: one route per protected route,
// app.all('*') for everything else, and method-override set up as its
// README shows (every getter it documents). A protected handler answers
// "PROTECTED <route>" and records "<X-Fuzz-Id> <method> <route>" (and
// " user=<X-Waitroom-User>" when the gateway said who); the
// catch-all answers "OPEN <method> <path>". GET /__hits lists the records,
// DELETE clears them.
'use strict'

const bodyParser = require('body-parser')
const express = require('express')
const methodOverride = require('method-override')

const app = express()
const hits = []

// First, so that neither the overrides nor the catch-all come before them.
app.get('/__hits', (req, res) => {
  res.type('text/plain').send(hits.map((h) => h + '\n').join(''))
})
app.delete('/__hits', (req, res) => {
  hits.length = 0
  res.type('text/plain').send('')
})

// The README's examples: the bodies parsed first (the custom getter reads
// req.body), then the headers (last one takes precedence), the query's
// _method, and the body's _method.
app.use(bodyParser.urlencoded({ extended: true }))
app.use(bodyParser.json())
app.use(methodOverride('X-HTTP-Method')) //          Microsoft
app.use(methodOverride('X-HTTP-Method-Override')) // Google/GData
app.use(methodOverride('X-Method-Override')) //      IBM
app.use(methodOverride('_method'))
app.use(methodOverride(function (req, res) {
  if (req.body && typeof req.body === 'object' && '_method' in req.body) {
    // look in urlencoded POST bodies and delete it
    const method = req.body._method
    delete req.body._method
    return method
  }
}))

function protect (route) {
  return (req, res) => {
    const user = req.get('X-Waitroom-User')
    hits.push(`${req.get('X-Fuzz-Id') ?? '-'} ${req.method} ${route}` + (user === undefined ? '' : ` user=${user}`))
    res.type('text/plain').send('PROTECTED ' + route)
  }
}

app.post('/checkout', protect('POST /checkout'))
app.post('/api/buy', protect('POST /api/buy'))
app.put('/items/:id', protect('PUT /items/{id}'))
app.post('/orders/:id/pay', protect('POST /orders/{id}/pay'))
// Express's router sends HEAD to a GET route.
app.get('/drops/:id/buy', protect('GET /drops/{id}/buy'))

// req.path: the undecoded path Express's router matched against.
app.all('*', (req, res) => {
  res.type('text/plain').send(`OPEN ${req.method} ${req.path}`)
})

const server = app.listen(0, '127.0.0.1', () => {
  console.log('PORT ' + server.address().port)
})
