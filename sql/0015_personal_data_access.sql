-- Who looked at personal data, and at what (issue 51): `dispatcher inspect`
-- masks it unless asked with --show-personal-data, and each such look is
-- recorded here (the operator, the rows asked for), never the data itself.
CREATE TABLE outbox_personal_data_access (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    accessed_by text        NOT NULL,
    what        text        NOT NULL
);
