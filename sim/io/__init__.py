"""Reading and writing files safely, and checking what they hold against typed ranges: rules that know nothing
of convolutions, tasks or GPUs.

They sit below the contract, not in it or in the application, because both use them: the contract loads GPU
specs and mapping files through `schema.parse` and reads records with `files.read_json`, and the application
reads profiles and measurements and writes every output the same way. One layer at the bottom keeps each rule
in one place with every import still pointing down. The executors import none of it themselves.

`files` (regular files only, UTF-8 with one-line errors, TOML, JSON, JSON lines), `writing` (outputs checked
before the work, written then renamed, all or nothing), `schema` (range markers, pydantic's one-line errors)
and `accept` (the plainly valid case without pydantic) raise `errors.MegasimError`, the one error the CLI
prints as a line. Domain rules built on them (a tensor dimension below 2^31, how big a graph may be, the
scheduling modes) stay in `megasim.contract`.
"""
