"Package setup, driven by settings.ini (the nbdev 2 convention)."

from configparser import ConfigParser
import setuptools, shlex


config = ConfigParser(delimiters=['='])
config.read('settings.ini', encoding='utf-8')
cfg = config['DEFAULT']

cfg_keys = 'version description keywords author author_email'.split()
expected = cfg_keys + "lib_name user branch license status min_python audience language".split()
for o in expected: assert o in cfg, "missing expected setting: {}".format(o)
setup_cfg = {o: cfg[o] for o in cfg_keys}

licenses = {'apache2': 'Apache-2.0'}   # SPDX license expressions (PEP 639), not the deprecated license classifiers
statuses = ['1 - Planning', '2 - Pre-Alpha', '3 - Alpha', '4 - Beta', '5 - Production/Stable', '6 - Mature', '7 - Inactive']
py_versions = '3.11 3.12'.split()

requirements = shlex.split(cfg.get('requirements', ''))
dev_requirements = shlex.split(cfg.get('dev_requirements', ''))
lic = licenses.get(cfg['license'].lower(), cfg['license'])
min_python = cfg['min_python']

setuptools.setup(
    name=cfg['lib_name'],
    license=lic,
    classifiers=['Development Status :: ' + statuses[int(cfg['status'])],
                 'Intended Audience :: ' + cfg['audience'].title(),
                 'Natural Language :: ' + cfg['language'].title()]
                + ['Programming Language :: Python :: ' + o for o in py_versions[py_versions.index(min_python):]],
    url=cfg['git_url'],
    # the zoo of trained agents is package data: its folder is declared as a (data-only) package so that setuptools ships it
    packages=setuptools.find_packages(include=['rlexplain', 'rlexplain.*']) + ['rlexplain.zoo', 'rlexplain.data'],
    include_package_data=True,
    package_data={'rlexplain': ['claims.toml',   # the scoreboard's claims (rlexplain.scoreboard.load_claims)
                                'papers/*.csv', 'papers/*.toml'],   # the papers' published tables (rlexplain.papers)
                  # results of papers' own code (bench/xrlbench_original.py) and published scores (agent_zoo): a data-only package
                  'rlexplain.data': ['*.csv', '*.json'],
                  'rlexplain.zoo': ['*/*/*/*/card.json', '*/*/*/*/weights.safetensors', '*.json', '*.md']},
    exclude_package_data={'rlexplain.zoo': ['_resume/**/*']},
    install_requires=requirements,
    extras_require={'dev': dev_requirements},
    dependency_links=cfg.get('dep_links', '').split(),
    python_requires='>=' + cfg['min_python'],
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    zip_safe=False,
    entry_points={'console_scripts': cfg.get('console_scripts', '').split(), 'nbdev': [f'{cfg.get("lib_path")}={cfg.get("lib_path")}._modidx:d']},
    **setup_cfg)
