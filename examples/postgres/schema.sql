-- The shop: customers and their orders. The reader replicates both tables through the
-- publication; each row becomes a node labelled by its table (customers:1, orders:10, ...).
CREATE TABLE customers (
    id int PRIMARY KEY,
    name text NOT NULL,
    city text NOT NULL
);
CREATE TABLE orders (
    id int PRIMARY KEY,
    customer_id int NOT NULL REFERENCES customers (id),
    total numeric(10, 2) NOT NULL,
    status text NOT NULL DEFAULT 'open'
);
CREATE PUBLICATION drasi_publication FOR TABLE customers, orders;

INSERT INTO customers VALUES (1, 'Ann', 'Oslo'), (2, 'Bob', 'Rome'), (3, 'Cy', 'Rome');
INSERT INTO orders VALUES
    (1, 1, 25.00, 'open'),
    (2, 2, 80.00, 'open'),
    (3, 3, 120.00, 'paid');
